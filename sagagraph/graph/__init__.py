"""Orchestration: a saga definition becomes a LangGraph state graph."""
