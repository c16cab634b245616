-- The OpenAI-compatible endpoint answers each completion with the tokens its turn used (issue 14):
-- one indexed read of the turn's usage rows, by the message they answer.
CREATE INDEX llm_usage_inbox ON llm_usage (inbox_id);
