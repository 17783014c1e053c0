"""Session viewer: a static HTML site of a run (``polar-hpc view``) and the terminal view (``shards show``)."""
