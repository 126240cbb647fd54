-- Version 15 (issue 32): each vehicle's last outcome of a remote board
-- configuration (docs/remote-config.md), from its retained status topic
-- railmon/<vehicle>/config/status (JSON: version, outcome, why), for the
-- dashboard's vehicle page.  One row per vehicle: the newest message a
-- receiver heard.  The payload is the vehicle's word, checked by the
-- receiver before it gets here (ground/config-status.c: at most 4096
-- bytes, UTF-8, the three fields and nothing else); the vehicle is the
-- topic's (the broker's ACL lets a vehicle write only its own topics).
-- at: when a receiver first heard this outcome (the same message again,
-- the retained one at each reconnect, keeps it); updated_at: last heard.
CREATE TABLE vehicle_config_status (
    vehicle_id integer PRIMARY KEY REFERENCES vehicles,
    version    bigint NOT NULL CHECK (version >= 0),
    outcome    text NOT NULL CHECK (outcome IN ('applied', 'refused', 'rolled back')),
    why        text NOT NULL CHECK (length(why) <= 4096),
    at         timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
