package objstore

import "github.com/jetlake/jetlake/formats"

// WithWrongChecksum returns a copy of s whose uploads carry the CRC32C of
// other bytes than their bodies, as a body damaged on its way would.
func (s *S3Store) WithWrongChecksum() *S3Store {
	c := *s
	c.crc32c = func(b formats.Body) string { return bodyCRC32C(formats.NewBody(append(b.Bytes(), 'x'))) }
	return &c
}
