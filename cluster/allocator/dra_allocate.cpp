// dra-allocate: offline structured-parameters allocation (see cluster/allocator/cli.hpp).

#include <iostream>

#include "numadra/allocator/cli.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return numadra::allocator::runDraAllocate(args, std::cin, std::cout, std::cerr);
}
