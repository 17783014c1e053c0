"""Reference inference server: SGLang's /generate subset on torch CPU (tests, --backend local)."""
