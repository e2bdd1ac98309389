CREATE EXTERNAL TABLE IF NOT EXISTS events (
  stream string,
  subject string,
  sequence bigint,
  `timestamp` timestamp,
  headers string,
  user_id bigint,
  qty int,
  amount double,
  paid boolean,
  created_at timestamp,
  day date,
  `order` string,
  attrs string
)
PARTITIONED BY (
  year int,
  month int,
  path_day int
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
  'projection.path_day.type' = 'integer',
  'projection.path_day.range' = '1,31',
  'projection.path_day.digits' = '2',
  'storage.location.template' = 's3://lake/raw/${year}/${month}/${path_day}/'
);
