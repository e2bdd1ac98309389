CREATE EXTERNAL TABLE IF NOT EXISTS events (
  stream string,
  subject string,
  sequence bigint,
  `timestamp` string,
  payload string,
  payload_encoding string
)
PARTITIONED BY (
  path_stream string,
  dt string,
  tenant string,
  x_region string
)
ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'
STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'
OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'
LOCATION 's3://lake/raw/'
TBLPROPERTIES (
  'projection.enabled' = 'true',
  'projection.path_stream.type' = 'enum',
  'projection.path_stream.values' = 'EVENTS',
  'projection.dt.type' = 'date',
  'projection.dt.format' = 'yyyy-MM-dd',
  'projection.dt.range' = '2020-01-01,NOW',
  'projection.dt.interval' = '1',
  'projection.dt.interval.unit' = 'DAYS',
  'projection.tenant.type' = 'injected',
  'projection.x_region.type' = 'injected',
  'storage.location.template' = 's3://lake/raw/${path_stream}/dt=${dt}/tenant=${tenant}/${x_region}/'
);
