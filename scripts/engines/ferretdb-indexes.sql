-- Indexes PostgreSQL can use for the filters FerretDB v1 sends it (docs/decisions/0143-ferretdb-filters-served-by-indexes.md).
--
-- FerretDB pushes an equality filter down as `_jsonb -> 'field' @> value`, a containment test that the btree
-- expression indexes it creates for `createIndex` (and for `_id`) cannot serve: every find, a lookup by `_id`
-- included, was a sequential scan of its collection's table. A GIN index (`jsonb_path_ops`) on the same
-- expression serves that test. This script gives every key of every index FerretDB makes such a twin, now and
-- as FerretDB creates indexes later (an event trigger), and has the planner plan each execution with its
-- values, which it needs to match `_jsonb -> $1` to the index's `_jsonb -> 'field'`.
--
-- Applied by up.sh to the `ferretdb` database after it exists and before FerretDB connects; safe to re-run.

ALTER DATABASE ferretdb SET plan_cache_mode = force_custom_plan;

CREATE OR REPLACE FUNCTION estate_gin_twins(idx oid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  rel oid;
  nkeys int;
  method text;
  index_name text;
  schema_name text;
  table_name text;
  key_expr text;
BEGIN
  SELECT i.indrelid, i.indnkeyatts, a.amname, c.relname
    INTO rel, nkeys, method, index_name
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_am a ON a.oid = c.relam
   WHERE i.indexrelid = idx;
  -- Only FerretDB's btree indexes (the twins themselves are GIN), on its tables of JSONB documents.
  IF method IS DISTINCT FROM 'btree' THEN
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = rel AND attname = '_jsonb' AND NOT attisdropped) THEN
    RETURN;
  END IF;
  SELECT n.nspname, t.relname INTO schema_name, table_name
    FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
   WHERE t.oid = rel;
  FOR k IN 1..nkeys LOOP
    key_expr := pg_get_indexdef(idx, k, false);
    -- A document field: `(_jsonb -> 'accountId'::text)`, nested ones `((_jsonb -> 'slot'::text) -> 'token'::text)`.
    CONTINUE WHEN key_expr !~ '^\(*_jsonb -> ';
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin ((%s) jsonb_path_ops)',
      left(index_name, 54) || '_gin' || k, schema_name, table_name, key_expr
    );
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION estate_gin_twins_on_ddl() RETURNS event_trigger
LANGUAGE plpgsql AS $$
DECLARE
  created record;
BEGIN
  FOR created IN
    SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' AND object_type = 'index'
  LOOP
    PERFORM estate_gin_twins(created.objid);
  END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS estate_gin_twins;
CREATE EVENT TRIGGER estate_gin_twins ON ddl_command_end
  WHEN TAG IN ('CREATE INDEX')
  EXECUTE FUNCTION estate_gin_twins_on_ddl();

-- Indexes FerretDB made before this script ran (an engine started by an earlier version of up.sh).
DO $$
DECLARE
  existing record;
BEGIN
  FOR existing IN
    SELECT i.indexrelid
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_am a ON a.oid = c.relam
     WHERE a.amname = 'btree'
       AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = i.indrelid AND attname = '_jsonb' AND NOT attisdropped)
  LOOP
    PERFORM estate_gin_twins(existing.indexrelid);
  END LOOP;
END
$$;
