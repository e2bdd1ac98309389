CREATE EXTERNAL TABLE IF NOT EXISTS events (
  stream string,
  subject string,
  sequence bigint,
  `timestamp` string,
  headers string,
  payload string,
  payload_encoding string
)
PARTITIONED BY (
  path_stream string,
  path_subject string,
  `date` string,
  hour int
)
ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'
STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'
OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'
LOCATION 's3://lake/raw/'
TBLPROPERTIES (
  'projection.enabled' = 'true',
  'projection.path_stream.type' = 'enum',
  'projection.path_stream.values' = 'EVENTS',
  'projection.path_subject.type' = 'injected',
  'projection.date.type' = 'date',
  'projection.date.format' = 'yyyy-MM-dd',
  'projection.date.range' = '2020-01-01,NOW',
  'projection.date.interval' = '1',
  'projection.date.interval.unit' = 'DAYS',
  'projection.hour.type' = 'integer',
  'projection.hour.range' = '0,23',
  'projection.hour.digits' = '2',
  'storage.location.template' = 's3://lake/raw/${path_stream}/${path_subject}/${date}/${hour}/'
);
