package exportertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/minio/minio-go/v7/pkg/signer"
	"github.com/secure-io/sio-go"
	"golang.org/x/crypto/argon2"
)

// MinIO's admin API: the three calls AddUser needs, signed with the root
// credentials as MinIO's own admin client signs them.
const (
	minioAdminPrefix = "/minio/admin/v3"

	// The key derivation of the admin API's encrypted request bodies:
	// argon2id with these costs over a 32-byte salt, then AES-256-GCM
	// in the sio stream format; the id byte names that pair.
	adminArgon2Time    = 1
	adminArgon2Memory  = 64 * 1024
	adminArgon2Threads = 4
	adminArgon2AESGCM  = 0x00
)

// AddUser creates the MinIO user accessKey with secretKey, adds policy (an
// IAM policy document) as the canned policy policyName, and attaches it to
// the user, so that the user may do exactly what policy allows. MinIO
// refuses a policy it cannot load; the error carries its message.
func (s *MinIOServer) AddUser(ctx context.Context, accessKey, secretKey, policyName, policy string) error {
	if err := s.admin(ctx, "add-canned-policy", url.Values{"name": {policyName}}, []byte(policy)); err != nil {
		return err
	}
	user, err := json.Marshal(map[string]string{"secretKey": secretKey, "status": "enabled"})
	if err != nil {
		return fmt.Errorf("exportertest: add user %s: %w", accessKey, err)
	}
	body, err := s.adminEncrypt(user)
	if err != nil {
		return fmt.Errorf("exportertest: add user %s: %w", accessKey, err)
	}
	if err := s.admin(ctx, "add-user", url.Values{"accessKey": {accessKey}}, body); err != nil {
		return err
	}
	return s.admin(ctx, "set-user-or-group-policy", url.Values{
		"policyName": {policyName}, "userOrGroup": {accessKey}, "isGroup": {"false"},
	}, nil)
}

// UserEnv is ClientEnv for the user accessKey instead of the root user.
func (s *MinIOServer) UserEnv(accessKey, secretKey string, add ...string) []string {
	return Environ("AWS_", append([]string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey}, add...)...)
}

// admin sends PUT <prefix>/<call>?query with body, signed as the root
// user, and requires 200.
func (s *MinIOServer) admin(ctx context.Context, call string, query url.Values, body []byte) error {
	u := s.Endpoint + minioAdminPrefix + "/" + call + "?" + query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("exportertest: minio admin %s: %w", call, err)
	}
	sum := sha256.Sum256(body)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req = signer.SignV4(*req, s.AccessKey, s.SecretKey, "", MinIORegion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("exportertest: minio admin %s: %w", call, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("exportertest: minio admin %s: %s: %s", call, resp.Status, msg)
	}
	return nil
}

// adminEncrypt encrypts data for the admin API with the root secret key:
// salt || id || nonce || sio stream of data.
func (s *MinIOServer) adminEncrypt(data []byte) ([]byte, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	key := argon2.IDKey([]byte(s.SecretKey), salt, adminArgon2Time, adminArgon2Memory, adminArgon2Threads, 32)
	stream, err := sio.AES_256_GCM.Stream(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, stream.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(salt)
	out.WriteByte(adminArgon2AESGCM)
	out.Write(nonce)
	w := stream.EncryptWriter(&out, nonce, nil)
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
