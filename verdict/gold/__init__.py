"""The 30-task gold set of the self-grading runner (tables + expected decisions)."""
