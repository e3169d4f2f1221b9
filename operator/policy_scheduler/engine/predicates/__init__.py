"""Predicate families: each module registers its legacy names with the engine registry."""
