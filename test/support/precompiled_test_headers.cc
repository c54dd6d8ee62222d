// The program that test/CMakeLists.txt's precompiled test headers
// (chorus_unit_test_pch, chorus_parallel_test_pch) are made for, so that they
// are made with the flags of the test programs that reuse them. It does
// nothing.
int main() { return 0; }
