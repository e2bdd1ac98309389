CREATE TABLE IF NOT EXISTS events (
  stream varchar,
  subject varchar,
  sequence bigint,
  "timestamp" timestamp,
  payload varchar,
  payload_base64 varchar,
  path_stream varchar WITH (partition_projection_type = 'ENUM', partition_projection_values = ARRAY['EVENTS']),
  "date" varchar WITH (partition_projection_type = 'DATE', partition_projection_format = 'yyyy-MM-dd', partition_projection_range = ARRAY['2020-01-01', 'NOW'], partition_projection_interval = 1, partition_projection_interval_unit = 'DAYS'),
  hour integer WITH (partition_projection_type = 'INTEGER', partition_projection_range = ARRAY['0', '23'], partition_projection_digits = 2)
)
WITH (
  format = 'PARQUET',
  external_location = 's3://lake/raw/',
  partitioned_by = ARRAY['path_stream', 'date', 'hour'],
  partition_projection_enabled = true,
  partition_projection_location_template = 's3://lake/raw/${path_stream}/date=${date}/hour=${hour}/'
);
