# vidgraph-run: placeholder until it lands.
