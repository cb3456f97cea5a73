"""Geometry types: each converts user data to flat parts and builds typed results."""
