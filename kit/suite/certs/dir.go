package certs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The files of one process's directory (docs/deploy.md): everything a
// process needs to prove who it is and to check its peers, and nothing
// else — the CA's key is never among them.
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
	// MetricsCertFile and MetricsKeyFile are a serving leaf, beside the
	// leaf of a process whose own leaf does not serve (a tool host's): what
	// its metrics listener presents (--metrics-tls-cert, --metrics-tls-key).
	MetricsCertFile = "metrics-cert.pem"
	MetricsKeyFile  = "metrics-key.pem"
)

// DirFiles names the files of the process directory dir.
func DirFiles(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}
}

// Owner is the user a process directory is given to.
type Owner struct{ UID, GID int }

// ParseOwner reads UID:GID (numeric: the image a certs step runs in may
// have no user database).
func ParseOwner(s string) (*Owner, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, uerr := strconv.Atoi(u)
	gid, gerr := strconv.Atoi(g)
	if !ok || uerr != nil || gerr != nil || uid < 0 || gid < 0 {
		return nil, fmt.Errorf("owner %q is not UID:GID, such as 65532:65532", s)
	}
	return &Owner{UID: uid, GID: gid}, nil
}

// chown gives path to o; nil leaves it to whoever wrote it.
func (o *Owner) chown(path string) error {
	if o == nil {
		return nil
	}
	if err := os.Lchown(path, o.UID, o.GID); err != nil {
		return fmt.Errorf("giving %s to %d:%d: %w", path, o.UID, o.GID, err)
	}
	return nil
}
