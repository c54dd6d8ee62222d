// init()'s report to chorusrun (core/base/launcher_rendezvous.cc), against a
// real listening socket. report_init_to_launcher() connects and sends before
// it returns, so whether a connection is waiting right after it is certain.
#include "base/launcher_rendezvous.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "reports/report_protocol.h"

namespace chorus {
namespace {

class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // take(), waiting up to `ms` for a connection.
  std::optional<std::string> take_within(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) != 1) return std::nullopt;
    return take();
  }
  // What the one waiting connection sent, or nullopt when none is waiting.
  std::optional<std::string> take() {
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return std::nullopt;
    std::string text;
    char buffer[256];
    ssize_t n;
    while ((n = read(c, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
    close(c);
    return text;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

Config::Lookup lookup(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(LauncherRendezvous, DoesNothingWithoutTheVariable) {
  Listener listener;
  report_init_to_launcher(lookup({{kLauncherTokenVariable, "tok"}, {kLauncherRankVariable, "1"}}));
  EXPECT_FALSE(listener.take().has_value());
}

TEST(LauncherRendezvous, ReportsRankAndTokenInTheLaunchersFormat) {
  Listener listener;
  report_init_to_launcher(lookup({{kLauncherAddressVariable, listener.address()},
                                  {kLauncherTokenVariable, "tok"},
                                  {kLauncherRankVariable, "3"}}));
  const std::optional<std::string> sent = listener.take();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(*sent, "init tok 3\n");
  const auto parsed = launcher::parse_report(sent->substr(0, sent->size() - 1));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->kind, launcher::ReportMessage::Kind::kInit);
  EXPECT_EQ(parsed->rank, 3);
}

TEST(LauncherRendezvous, MalformedOrUnreachableAddressOnlyWarns) {
  Listener listener;
  // Not host:port: nothing is sent, and init() goes on (no exception).
  report_init_to_launcher(lookup({{kLauncherAddressVariable, "nowhere"},
                                  {kLauncherTokenVariable, "tok"},
                                  {kLauncherRankVariable, "0"}}));
  EXPECT_FALSE(listener.take().has_value());
  // Port 1 on loopback refuses at once.
  report_init_to_launcher(lookup({{kLauncherAddressVariable, "127.0.0.1:1"},
                                  {kLauncherTokenVariable, "tok"},
                                  {kLauncherRankVariable, "0"}}));
  EXPECT_FALSE(listener.take().has_value());
}

// The lost report goes from a thread of its own, so the test waits for it.
TEST(LauncherRendezvous, ReportsTheFirstLostRankInTheLaunchersFormatWithoutBlocking) {
  Listener listener;
  const auto vars = lookup({{kLauncherAddressVariable, listener.address()},
                            {kLauncherTokenVariable, "tok"},
                            {kLauncherRankVariable, "0"}});
  LostRankReporter reporter;
  reporter.report(2, "n2", vars);
  const std::optional<std::string> sent = listener.take_within(5000);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(*sent, "lost tok 0 2 n2\n");
  const auto parsed = launcher::parse_report(sent->substr(0, sent->size() - 1));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->kind, launcher::ReportMessage::Kind::kLost);
  EXPECT_EQ(parsed->lost.reporter, 0);
  EXPECT_EQ(parsed->lost.rank, 2);
  EXPECT_EQ(parsed->lost.host, "n2");
  // The heartbeat and the local peer watch may both see the same rank go.
  reporter.report(2, "n2", vars);
  EXPECT_FALSE(listener.take_within(300).has_value());
  // A rank that ends after the first loss (a neighbour aborting the job over
  // it) is not reported: its healthy host would be blamed too.
  reporter.report(1, "n1", vars);
  EXPECT_FALSE(listener.take_within(300).has_value());
}

TEST(LauncherRendezvous, AnUnreachableLauncherHoldsNobodyWithItsLostReport) {
  LostRankReporter reporter;
  const auto start = std::chrono::steady_clock::now();
  reporter.report(5, "n3", lookup({{kLauncherAddressVariable, "10.255.255.1:9"},
                                   {kLauncherTokenVariable, "tok"},
                                   {kLauncherRankVariable, "0"}}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(LauncherRendezvous, SplitsAddresses) {
  std::string host;
  int port = 0;
  EXPECT_TRUE(split_launcher_address("10.0.0.1:5000", &host, &port));
  EXPECT_EQ(host, "10.0.0.1");
  EXPECT_EQ(port, 5000);
  EXPECT_FALSE(split_launcher_address("10.0.0.1", &host, &port));
  EXPECT_FALSE(split_launcher_address("10.0.0.1:0", &host, &port));
  EXPECT_FALSE(split_launcher_address("10.0.0.1:65536", &host, &port));
  EXPECT_FALSE(split_launcher_address(":80", &host, &port));
  EXPECT_FALSE(split_launcher_address("h:8x", &host, &port));
}

}  // namespace
}  // namespace chorus
