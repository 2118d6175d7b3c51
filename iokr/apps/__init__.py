"""Applications built only from the library's layers: retrieval, multi-label, metabolite identification."""
