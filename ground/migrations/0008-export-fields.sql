-- Version 8 (issue 28): what `railmon export --db` needs to give the
-- fields `railmon export` of the vehicle log gives (docs/ground-schema.md):
-- each dictionary entry's bus name (the board file's section, which the
-- log's records carry as bus_name) and the decimals its values print with
-- (a DBC signal's resolution, Channel.decimals).  NULL: the dictionary did
-- not give it, or the row was stored before this version (export then
-- prints bus_name empty and the value in its shortest round-trip form).

ALTER TABLE configs ADD COLUMN bus_name text;
ALTER TABLE configs ADD COLUMN decimals integer;

-- New columns go at the end: the views over channel_names stay as they are.
CREATE OR REPLACE VIEW channel_names AS
SELECT c.vehicle_id, c.channel, c.name, c.unit, c.bus, c.source, c.value_table, c.bus_name, c.decimals
FROM (SELECT DISTINCT ON (vehicle_id) vehicle_id, config_hash FROM dictionaries
      ORDER BY vehicle_id, updated_at DESC, config_hash) d
JOIN configs c ON c.vehicle_id = d.vehicle_id AND c.config_hash = d.config_hash;
