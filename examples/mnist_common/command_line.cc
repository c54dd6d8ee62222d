#include "command_line.h"

#include "example_error.h"

namespace po = boost::program_options;

namespace train_mnist {

void declare_shared_options(po::options_description* description, const std::string& default_data_dir) {
  description->add_options()
      ("help,h", "print this help and exit")
      ("epochs", po::value<std::string>()->default_value("5"), "epochs to train (1-100000)")
      ("batch-size", po::value<std::string>()->default_value("64"), "samples per batch per rank (1-65536)")
      ("lr", po::value<std::string>()->default_value("0.001"),
       "learning rate of one process; Adam runs with lr x number of ranks")
      ("seed", po::value<std::string>()->default_value("42"),
       "seed of the initial parameters and of the data order (same on every rank)")
      ("data-dir", po::value<std::string>()->default_value(default_data_dir),
       "folder with the four MNIST IDX files (scripts/prepare_mnist.sh)");
}

po::variables_map parse_command_line(const std::vector<std::string>& arguments,
                                     const po::options_description& description, const std::string& program) {
  po::variables_map values;
  try {
    const po::parsed_options parsed_options =
        po::command_line_parser(arguments)
            .options(description)
            .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
            .run();
    // Without declared positional options Boost keeps stray words aside
    // instead of refusing them.
    const std::vector<std::string> stray =
        po::collect_unrecognized(parsed_options.options, po::include_positional);
    if (!stray.empty()) {
      fail("Unexpected argument '" + stray.front() + "': " + program + " takes options only (" + program +
           " --help lists them)");
    }
    po::store(parsed_options, values);
    po::notify(values);
  } catch (const po::error& e) {
    fail(std::string(e.what()) + " (" + program + " --help lists the options)");
  }
  return values;
}

}  // namespace train_mnist
