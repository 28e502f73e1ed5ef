// Test fixture: a shared library that is not a Vidgraph plugin (no vidgraph_plugin_entry).
extern "C" __attribute__((visibility("default"))) int vidgraph_fixture_something_else(void) { return 42; }
