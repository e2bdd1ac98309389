CREATE TABLE IF NOT EXISTS events (
  stream varchar,
  subject varchar,
  sequence bigint,
  "timestamp" timestamp,
  payload varchar,
  payload_base64 varchar,
  year integer WITH (partition_projection_type = 'INTEGER', partition_projection_range = ARRAY['2020', '2099'], partition_projection_digits = 4),
  month integer WITH (partition_projection_type = 'INTEGER', partition_projection_range = ARRAY['1', '12'], partition_projection_digits = 2),
  day integer WITH (partition_projection_type = 'INTEGER', partition_projection_range = ARRAY['1', '31'], partition_projection_digits = 2)
)
WITH (
  format = 'PARQUET',
  external_location = 's3://lake/raw/',
  partitioned_by = ARRAY['year', 'month', 'day'],
  partition_projection_enabled = true,
  partition_projection_location_template = 's3://lake/raw/${year}/${month}/${day}/'
);
