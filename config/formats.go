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
		RawDelimiter: []byte(o.RawDelimiter),
		RowGroupSize: o.RowGroupSize,
		OmitPayload:  !o.KeepPayload,
		OnTypeError:  o.OnTypeError,
	}
	if o.Format != formats.Parquet {
		// The other formats write the records as they are; typed columns
		// serve paths and event time only.
		return opts
	}
	for _, col := range o.Columns {
		opts.Columns = append(opts.Columns, formats.Column{
			Name: col.Name, Source: col.Source, Type: col.Type, Unit: col.Unit, Coerce: col.Coerce,
		})
	}
	return opts
}
