"""``polar-hpc eval``: a model's pass rate through a recipe's real harness on a task file (pass@1 with a Wilson
interval, pass@k, failure causes), measured by launching a run and reading its committed shards."""
