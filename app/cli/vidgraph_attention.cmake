# vidgraph-attention: placeholder until it lands.
