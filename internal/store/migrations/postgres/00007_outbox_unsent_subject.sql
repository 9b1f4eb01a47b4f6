-- The unsent messages of one subject, for the check that a directly
-- published event does not overtake an earlier one of its subject
-- (store.UnsentOn): without it the check reads every unsent message.

-- +goose Up
CREATE INDEX outbox_unsent_subject ON outbox (subject, id) WHERE sent_at IS NULL;
