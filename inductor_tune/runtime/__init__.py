"""What a training process runs, apart from the tuner: for now the rule lookup a patched torch copies
(``torch_rules``), the compile guard (``fallback``) and the launch configs and their limits (``launch``)."""
