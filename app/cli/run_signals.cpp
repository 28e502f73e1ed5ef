// Async-signal-safe interrupt handling (see run_signals.h).
#include "run_signals.h"

#include <unistd.h>

#include <csignal>

namespace vidgraph::cli {
namespace {

volatile std::sig_atomic_t g_interrupts = 0;
struct sigaction g_old_int {};
struct sigaction g_old_term {};

extern "C" void on_interrupt(int) {
  g_interrupts = g_interrupts + 1;
  if (g_interrupts >= 2) {
    const char msg[] = "\nvidgraph-run: interrupted again, exiting now\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(130);
  }
}

}  // namespace

void install_interrupt_handler() {
  g_interrupts = 0;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

void remove_interrupt_handler() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool interrupt_requested() { return g_interrupts > 0; }

}  // namespace vidgraph::cli
