// Ctrl-C handling for vidgraph-run: the first SIGINT (or SIGTERM) only records a request, which the
// main loop turns into Engine::cancel(); a second one exits at once with status 130.
#pragma once

namespace vidgraph::cli {

void install_interrupt_handler();
void remove_interrupt_handler();
bool interrupt_requested();

}  // namespace vidgraph::cli
