package config

import "net/url"

// s3 checks [s3]: where objects go and how they are written; it reports
// false when the table has a problem.
func (c *checker) s3(t map[string]any, p keyPath) (S3, bool) {
	c.unknown(t, p, &s3Spec)
	nprobs := len(c.probs)
	s := S3{}
	c.s3Location(t, p, &s)
	c.s3Credentials(t, p, &s)
	c.s3Transport(t, p, &s)
	c.s3Objects(t, p, &s)
	if n, ok := c.integer(t, p, "upload_concurrency", defaultUploadConcurrency); ok {
		if n < 1 || n > maxUploadConcurrency {
			c.report(p.key("upload_concurrency"), "%d is out of range; allowed: 1 to %d", n, maxUploadConcurrency)
		}
		s.UploadConcurrency = int(n)
	}
	return s, len(c.probs) == nprobs
}

// s3Location checks where objects go: bucket, endpoint, region, prefix and
// path_style.
func (c *checker) s3Location(t map[string]any, p keyPath, s *S3) {
	if !has(t, "bucket") {
		c.report(p.key("bucket"), "missing; name the bucket objects are written to, such as \"lake\"")
	} else if b, ok := c.str(t, p, "bucket", ""); ok {
		if why := checkBucket(b); why != "" {
			c.report(p.key("bucket"), "%q is not a valid bucket name; %s", b, why)
		}
		s.Bucket = b
	}
	if e, ok := c.str(t, p, "endpoint", ""); ok && e != "" {
		if why := checkEndpoint(e); why != "" {
			c.report(p.key("endpoint"), "%q %s", RedactURL(e), why)
		}
		s.Endpoint = e
	}
	if r, ok := c.str(t, p, "region", defaultRegion); ok {
		if why := checkRegion(r); why != "" {
			c.report(p.key("region"), "%q %s", r, why)
		}
		s.Region = r
	}
	if pre, ok := c.str(t, p, "prefix", ""); ok {
		if why := checkPrefix(pre); why != "" {
			c.report(p.key("prefix"), "%q %s", pre, why)
		}
		s.Prefix = pre
	}
	s.PathStyle, _ = c.boolean(t, p, "path_style", s.Endpoint != "")
}

// s3Credentials checks the environment variables that hold the access
// keys: both or neither.
func (c *checker) s3Credentials(t map[string]any, p keyPath, s *S3) {
	s.AccessKeyIDEnv = c.envName(t, p, "access_key_id_env")
	s.SecretAccessKeyEnv = c.envName(t, p, "secret_access_key_env")
	idSet, secretSet := nonEmpty(t, "access_key_id_env"), nonEmpty(t, "secret_access_key_env")
	switch {
	case idSet && !secretSet:
		c.report(p.key("secret_access_key_env"), "missing; access_key_id_env is set, and the two go together")
	case !idSet && secretSet:
		c.report(p.key("access_key_id_env"), "missing; secret_access_key_env is set, and the two go together")
	}
}

// s3Transport checks how the endpoint is reached: plain HTTP only to a
// loopback address unless allow_insecure_http says so, and tls_ca_file.
func (c *checker) s3Transport(t map[string]any, p keyPath, s *S3) {
	s.AllowInsecureHTTP, _ = c.boolean(t, p, "allow_insecure_http", false)
	if u, err := url.Parse(s.Endpoint); err == nil && u.Scheme == "http" && !s.AllowInsecureHTTP && !isLoopback(u.Hostname()) {
		c.report(p.key("endpoint"), "%q is plain HTTP to a host that is not a loopback address: credentials and data would cross the network unencrypted; use https://, or set allow_insecure_http = true", RedactURL(s.Endpoint))
	}
	s.TLSCAFile, _ = c.str(t, p, "tls_ca_file", "")
}

// s3Objects checks what each object is stored with: server-side
// encryption, storage class and checksum.
func (c *checker) s3Objects(t map[string]any, p keyPath, s *S3) {
	if sse, ok := c.str(t, p, "sse", ""); ok {
		switch sse {
		case "", SSES3, SSEKMS:
			s.SSE = sse
		default:
			c.report(p.key("sse"), "%q is not a server-side encryption; allowed: \"s3\" (SSE-S3), \"kms\" (SSE-KMS, with sse_kms_key_id)", sse)
		}
	}
	s.SSEKMSKeyID, _ = c.str(t, p, "sse_kms_key_id", "")
	if s.SSEKMSKeyID != "" && s.SSE != SSEKMS {
		c.report(p.key("sse_kms_key_id"), "is set but sse is not \"kms\"; set sse = \"kms\" or leave sse_kms_key_id out")
	}
	if sc, ok := c.str(t, p, "storage_class", ""); ok && sc != "" {
		if why := checkToken(sc); why != "" {
			c.report(p.key("storage_class"), "%q %s; such as \"STANDARD_IA\"", sc, why)
		}
		s.StorageClass = sc
	}
	if cs, ok := c.str(t, p, "checksum", ChecksumCRC32C); ok {
		switch cs {
		case ChecksumCRC32C, ChecksumMD5:
			s.Checksum = cs
		default:
			c.report(p.key("checksum"), "%q is not a checksum jetlake sends; allowed: \"crc32c\" (x-amz-checksum-crc32c), \"md5\" (Content-MD5, for stores without the checksum headers)", cs)
		}
	}
}

// nonEmpty reports whether t holds a non-empty string at key.
func nonEmpty(t map[string]any, key string) bool {
	s, ok := t[key].(string)
	return ok && s != ""
}
