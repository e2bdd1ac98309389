CREATE EXTERNAL TABLE IF NOT EXISTS events (
  stream string,
  subject string,
  sequence bigint,
  `timestamp` timestamp,
  payload string,
  payload_base64 string
)
PARTITIONED BY (
  year int,
  month int,
  day int
)
STORED AS PARQUET
LOCATION 's3://lake/raw/'
TBLPROPERTIES (
  'projection.enabled' = 'true',
  'projection.year.type' = 'integer',
  'projection.year.range' = '2020,2099',
  'projection.year.digits' = '4',
  'projection.month.type' = 'integer',
  'projection.month.range' = '1,12',
  'projection.month.digits' = '2',
  'projection.day.type' = 'integer',
  'projection.day.range' = '1,31',
  'projection.day.digits' = '2',
  'storage.location.template' = 's3://lake/raw/${year}/${month}/${day}/'
);
