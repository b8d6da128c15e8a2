#include <iostream>
#include <string>
#include <vector>

#include "numadra/probe/probe.hpp"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return numadra::probe::runNumaProbe(args, std::cout, std::cerr,
                                        numadra::probe::AfterOutput::KeepUntilExit);
}
