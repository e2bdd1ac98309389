CREATE TABLE IF NOT EXISTS events (
  stream varchar,
  subject varchar,
  sequence bigint,
  "timestamp" timestamp,
  payload varchar,
  payload_encoding varchar,
  path_stream varchar WITH (partition_projection_type = 'ENUM', partition_projection_values = ARRAY['EVENTS']),
  dt varchar WITH (partition_projection_type = 'DATE', partition_projection_format = 'yyyy-MM-dd', partition_projection_range = ARRAY['2020-01-01', 'NOW'], partition_projection_interval = 1, partition_projection_interval_unit = 'DAYS'),
  tenant varchar WITH (partition_projection_type = 'INJECTED'),
  x_region varchar WITH (partition_projection_type = 'INJECTED')
)
WITH (
  format = 'OPENX_JSON',
  external_location = 's3://lake/raw/',
  partitioned_by = ARRAY['path_stream', 'dt', 'tenant', 'x_region'],
  partition_projection_enabled = true,
  partition_projection_location_template = 's3://lake/raw/${path_stream}/dt=${dt}/tenant=${tenant}/${x_region}/'
);
