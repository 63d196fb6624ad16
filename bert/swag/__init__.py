"""SWAG multiple choice."""
