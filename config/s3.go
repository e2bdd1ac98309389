package config

import (
	"fmt"
	"net/url"
)

// bucketName checks the name of the [s3] bucket.
func bucketName(b string) string {
	if why := checkBucket(b); why != "" {
		return fmt.Sprintf("%q is not a valid bucket name; %s", b, why)
	}
	return ""
}

// endpointURL checks the URL of an S3-compatible store, and never repeats
// credentials it may hold.
func endpointURL(e string) string {
	if why := checkEndpoint(e); why != "" {
		return fmt.Sprintf("%q %s", RedactURL(e), why)
	}
	return ""
}

// storageClass checks the name of a storage class.
func storageClass(sc string) string {
	if why := checkToken(sc); why != "" {
		return fmt.Sprintf("%q %s; such as \"STANDARD_IA\"", sc, why)
	}
	return ""
}

// awsEndpoint is the note of an endpoint left out.
func awsEndpoint(s *S3) string {
	if s.Endpoint == "" {
		return "endpoint: AWS S3"
	}
	return ""
}

// credentialChain is the note of access_key_id_env left out: the store's
// credentials are looked for where the AWS SDKs look.
func credentialChain(s *S3) string {
	if s.AccessKeyIDEnv == "" {
		return "credentials: the standard chain, first that works:"
	}
	return ""
}

// s3CrossChecks checks the rules of [s3] that relate its keys: the access
// key's two variables together, plain HTTP only to a loopback address
// unless allow_insecure_http says so, and a KMS key only with SSE-KMS.
func (c *checker) s3CrossChecks(t map[string]any, p keyPath, s *S3) {
	idSet, secretSet := nonEmpty(t, "access_key_id_env"), nonEmpty(t, "secret_access_key_env")
	switch {
	case idSet && !secretSet:
		c.report(p.key("secret_access_key_env"), "missing; access_key_id_env is set, and the two go together")
	case !idSet && secretSet:
		c.report(p.key("access_key_id_env"), "missing; secret_access_key_env is set, and the two go together")
	}
	if u, err := url.Parse(s.Endpoint); err == nil && u.Scheme == "http" && !s.AllowInsecureHTTP && !isLoopback(u.Hostname()) {
		c.report(p.key("endpoint"), "%q is plain HTTP to a host that is not a loopback address: credentials and data would cross the network unencrypted; use https://, or set allow_insecure_http = true", RedactURL(s.Endpoint))
	}
	if s.SSEKMSKeyID != "" && s.SSE != SSEKMS {
		c.report(p.key("sse_kms_key_id"), "is set but sse is not \"kms\"; set sse = \"kms\" or leave sse_kms_key_id out")
	}
}

// nonEmpty reports whether t holds a non-empty string at key.
func nonEmpty(t map[string]any, key string) bool {
	s, ok := t[key].(string)
	return ok && s != ""
}
