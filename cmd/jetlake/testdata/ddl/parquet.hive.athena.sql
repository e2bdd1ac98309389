CREATE EXTERNAL TABLE IF NOT EXISTS events (
  stream string,
  subject string,
  sequence bigint,
  `timestamp` timestamp,
  payload string,
  payload_base64 string
)
PARTITIONED BY (
  path_stream string,
  `date` string,
  hour int
)
STORED AS PARQUET
LOCATION 's3://lake/raw/'
TBLPROPERTIES (
  'projection.enabled' = 'true',
  'projection.path_stream.type' = 'enum',
  'projection.path_stream.values' = 'EVENTS',
  'projection.date.type' = 'date',
  'projection.date.format' = 'yyyy-MM-dd',
  'projection.date.range' = '2020-01-01,NOW',
  'projection.date.interval' = '1',
  'projection.date.interval.unit' = 'DAYS',
  'projection.hour.type' = 'integer',
  'projection.hour.range' = '0,23',
  'projection.hour.digits' = '2',
  'storage.location.template' = 's3://lake/raw/${path_stream}/date=${date}/hour=${hour}/'
);
