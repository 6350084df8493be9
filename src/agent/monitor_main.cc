// tessera-monitor: the leader of one task's process group (agent/monitor.h). Started by the
// agent, not by hand.
#include "agent/monitor.h"

int main(int argc, char** argv) { return tessera::agent::MonitorMain(argc, argv); }
