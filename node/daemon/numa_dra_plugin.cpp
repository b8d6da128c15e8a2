// numa-dra-plugin: the DRA kubelet plugin daemon. SIGTERM/SIGINT stop it cleanly.

#include "numadra/daemon/daemon.hpp"

int main(int argc, char** argv) {
    return numadra::daemon::daemonMain(argc, argv);
}
