-- Traces (issue 17): the W3C traceparent of the span that took a message in, so that its turn, on whichever worker
-- runs it (again, after a failover), continues the same trace. Null when the gateway did not trace.
ALTER TABLE inbox ADD COLUMN trace_parent text;
