// SIGTERM/SIGINT ask the agent to drain and exit; the handler only sets a flag.
#pragma once

namespace ojs::worker {

void install_shutdown_handlers();
bool shutdown_requested();

}  // namespace ojs::worker
