"""verl's own code run outside its trainer: the actor worker as the V1 trainer drives it, the checks of a run's command
and data by verl 0.9.1's composition, validation and loaders, PRIME's launch on verl 0.4.1, the settings verl
accepts and then ignores, and the CPU platform verl runs on at the small scale and in the tests (``cpu_platform``)."""
