"""AST converters, one Python feature per module; `d2s.convert.pipeline` orders them."""
