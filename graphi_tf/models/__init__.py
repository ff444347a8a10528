"""Small bundled models for ``graphi-tf tune --model NAME`` and for trying GRAPHI out."""
