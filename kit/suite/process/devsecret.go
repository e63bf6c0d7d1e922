package process

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// DevSecretFile is the name of a dev-mode suite's per-run secret in its
// --data directory (docs/security.md, "Dev mode").
const DevSecretFile = "dev-secret"

// DefaultDataDir is where `switchboard dev` keeps its state when --data is
// not given: $XDG_DATA_HOME/switchboard, or ~/.local/share/switchboard.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "switchboard")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "switchboard")
	}
	return ".data"
}

// WriteDevSecret writes the secret of this run of a dev-mode suite to
// dir/dev-secret, readable by this user only (0600), replacing the last
// run's; an empty secret is drawn (256 random bits). It returns the secret
// and the file.
func WriteDevSecret(dir, secret string) (string, string, error) {
	if secret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", "", err
		}
		secret = base64.RawURLEncoding.EncodeToString(b)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("the dev secret's directory: %w", err)
	}
	path := filepath.Join(dir, DevSecretFile)
	tmp, err := os.CreateTemp(dir, "."+DevSecretFile+".*") // 0600
	if err != nil {
		return "", "", fmt.Errorf("writing the dev secret: %w", err)
	}
	_, err = tmp.WriteString(secret + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", "", fmt.Errorf("writing the dev secret %s: %w", path, err)
	}
	return secret, path, nil
}

// ReadDevSecret reads the secret in path, refusing one that another user
// could read (the secret is what keeps them out).
func ReadDevSecret(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("the dev secret: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the dev secret %s has mode %v: other users could read it and call as anyone; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("the dev secret: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("the dev secret %s is empty", path)
	}
	return s, nil
}

// FindDevSecret is the secret a dev-mode client sends without being told:
// the file of $SWITCHBOARD_DATA, else of ./.data (what `make run` keeps),
// else of DefaultDataDir — the first that exists; none is "".
func FindDevSecret() (path string) {
	var dirs []string
	if d := os.Getenv("SWITCHBOARD_DATA"); d != "" {
		dirs = append(dirs, d)
	}
	for _, dir := range append(dirs, ".data", DefaultDataDir()) {
		p := filepath.Join(dir, DevSecretFile)
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			return p
		}
	}
	return ""
}

// DevCredentials are the secret in path as call credentials. The file is
// read again when it changes: a suite started again draws another secret,
// and a host that redials must carry the new one.
func DevCredentials(path string) (credentials.PerRPCCredentials, error) {
	f := &secretFile{path: path}
	if _, err := f.secret(); err != nil {
		return nil, err
	}
	return f, nil
}

type secretFile struct {
	path string

	mu      sync.Mutex
	mod     time.Time
	size    int64
	current string
}

// secret is the file's secret, read again when its time or size moved;
// when it cannot be read now (the suite is restarting), the last one.
func (f *secretFile) secret() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err == nil && (fi.ModTime() != f.mod || fi.Size() != f.size) {
		var s string
		if s, err = ReadDevSecret(f.path); err == nil {
			f.current, f.mod, f.size = s, fi.ModTime(), fi.Size()
		}
	}
	if f.current == "" {
		return "", fmt.Errorf("the dev secret: %w", err)
	}
	return f.current, nil
}

func (f *secretFile) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	s, err := f.secret()
	if err != nil {
		return nil, err
	}
	return identity.DevSecret(s).GetRequestMetadata(ctx, uri...)
}

func (f *secretFile) RequireTransportSecurity() bool { return false }
