package config

import "github.com/jetlake/jetlake/formats"

// Ext returns the extension of the objects the [output] settings make,
// compression included, such as "jsonl.gz". A validated Output always has
// one.
func (o *Output) Ext() string {
	ext, _, _ := formats.ObjectType(o.FormatsOptions())
	return ext
}

// FormatsOptions returns the encoder options the [output] settings describe.
func (o *Output) FormatsOptions() formats.Options {
	opts := formats.Options{
		Format:       o.Format,
		Compression:  o.Compression,
		Metadata:     o.IncludeMetadata,
		Headers:      o.IncludeHeaders,
		ExactPayload: o.KeepExactPayload,
		RawDelimiter: []byte(o.RawDelimiter),
		RowGroupSize: o.RowGroupSize,
		OmitPayload:  !o.KeepPayload,
		OnTypeError:  o.OnTypeError,
	}
	if o.Format == formats.Parquet {
		// The other formats write the records as they are; typed columns
		// serve paths and event time only.
		opts.Columns = o.TypedColumns()
	}
	return opts
}

// TypedColumns returns [[output.columns]] as formats reads them, in their
// order: the parquet encoder's columns, and what paths and event time read
// from payloads with every format.
func (o *Output) TypedColumns() []formats.Column {
	var cols []formats.Column
	for _, col := range o.Columns {
		cols = append(cols, formats.Column{
			Name: col.Name, Source: col.Source, Type: col.Type, Unit: col.Unit, Coerce: col.Coerce,
		})
	}
	return cols
}
