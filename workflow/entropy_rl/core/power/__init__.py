"""Power sampling's core: the samplers of p^α (``mcmc``: Karan & Du's Algorithm 1; ``smc``: Power-SMC; ``sps``:
scalable power sampling), each by its method kind (``algorithms``), and the study's methods (``methods``)."""
