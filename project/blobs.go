package project

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/up-pool/up/blob"
	"github.com/up-pool/up/blobclient"
	"github.com/up-pool/up/job"
)

// BlobReport tells what uploading a job file's local files did.
type BlobReport struct {
	Files int   // distinct local files (inputs and modules) uploaded
	Bytes int64 // their total size: the distinct data
	// Uploaded is the chunk bytes the project sent for them, to every
	// node: about Bytes when each blob's first node placed it, where
	// sending each to its r holders would be Bytes × Replication.
	Uploaded    int64
	Replication int // r: the nodes that hold each blob
}

// localFile is one distinct local file of a submission: its resolved
// path and kind, and once uploaded its blob's key and size.
type localFile struct {
	path     string
	kind     blob.Kind
	lifetime time.Duration // the longest lifetime of a job naming it
	key      []byte
	size     int64
}

// statementMargin is how much longer than the longest-lived job naming
// it a blob's statement lives: the jobs are signed after the upload.
const statementMargin = time.Hour

// UploadFiles uploads the local files units name (InputFiles and
// ModuleFile; a relative path is taken from dir) and fills in the units'
// blob inputs and modules with their keys. Each distinct file is read,
// split (blob.Split: KindInput for an input, KindWasm for a module) and
// uploaded once, with a statement living as long as the longest-lived
// unit naming it, however many units name it. Units naming no local file
// are left as they are.
func (p *Project) UploadFiles(ctx context.Context, units []Unit, dir string) (BlobReport, error) {
	rep := BlobReport{Replication: p.a.DHT().Replication()}
	files, order := p.localFiles(units, dir)
	for _, k := range order {
		lf := files[k]
		up, err := p.uploadFile(ctx, lf)
		if up != nil {
			rep.Uploaded += up.BytesUploaded
		}
		if err != nil {
			return rep, err
		}
		rep.Files++
		rep.Bytes += lf.size
	}
	for i := range units {
		u := &units[i]
		if u.ModuleFile != "" {
			u.Module = files[fileKey(resolve(dir, u.ModuleFile), blob.KindWasm)].key
		}
		if u.InputFiles == nil {
			continue
		}
		u.Inputs = slices.Clone(u.Inputs) // the parsed units share one slice
		for j, name := range u.InputFiles {
			if name != "" {
				lf := files[fileKey(resolve(dir, name), blob.KindInput)]
				u.Inputs[j] = job.Input{Blob: lf.key, Size: lf.size}
			}
		}
	}
	return rep, nil
}

// localFiles collects the distinct local files units name, in the order
// first named.
func (p *Project) localFiles(units []Unit, dir string) (map[string]*localFile, []string) {
	files := map[string]*localFile{}
	var order []string
	add := func(name string, kind blob.Kind, life time.Duration) {
		if name == "" {
			return
		}
		if life <= 0 {
			life = DefaultLifetime
		}
		path := resolve(dir, name)
		k := fileKey(path, kind)
		if lf, ok := files[k]; ok {
			lf.lifetime = max(lf.lifetime, life)
			return
		}
		files[k] = &localFile{path: path, kind: kind, lifetime: life}
		order = append(order, k)
	}
	for _, u := range units {
		add(u.ModuleFile, blob.KindWasm, u.Lifetime)
		for _, name := range u.InputFiles {
			add(name, blob.KindInput, u.Lifetime)
		}
	}
	return files, order
}

// uploadFile reads, splits and uploads one local file, recording its key
// and size in lf.
func (p *Project) uploadFile(ctx context.Context, lf *localFile) (*blobclient.Uploaded, error) {
	data, err := os.ReadFile(lf.path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", lf.kind, lf.path, err)
	}
	m, chunks, err := blob.Split(p.Name(), lf.kind, data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", lf.kind, lf.path, err)
	}
	life := min(lf.lifetime+statementMargin, time.Duration(job.MaxLifetimeMS)*time.Millisecond)
	signed, err := blobclient.Statement(p.a, m, life)
	if err != nil {
		return nil, fmt.Errorf("%s %s: statement: %w", lf.kind, lf.path, err)
	}
	up, err := blobclient.Upload(ctx, p.a, signed, m, chunks)
	if err != nil {
		return up, fmt.Errorf("%s %s: %w", lf.kind, lf.path, err)
	}
	lf.key, lf.size = m.Key(), m.Size
	_, st, err := blob.DecodeStatement(signed.Encode())
	if err != nil {
		return up, fmt.Errorf("%s %s: statement: %w", lf.kind, lf.path, err)
	}
	created := st.Created
	p.mu.Lock()
	if p.manifests == nil {
		p.manifests = map[string]BlobUse{}
	}
	p.manifests[string(lf.key)] = BlobUse{Key: lf.key, Manifest: m.Encode(), Created: created}
	p.mu.Unlock()
	return up, nil
}

// recordBlobs records in the ledger the blobs this process uploaded that
// the batch's units name (their Module and blob Inputs).
func (p *Project) recordBlobs(l *Ledger, unitIDs map[int]int64, units []Unit) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.manifests) == 0 {
		return nil
	}
	named := map[int64][]BlobUse{}
	for idx, u := range units {
		id, ok := unitIDs[idx]
		if !ok {
			continue
		}
		keys := [][]byte{u.Module}
		for _, in := range u.Inputs {
			keys = append(keys, in.Blob)
		}
		for _, k := range keys {
			if b, ok := p.manifests[string(k)]; ok && len(k) > 0 {
				named[id] = append(named[id], b)
			}
		}
	}
	return l.RecordBlobs(named)
}

// withdrawBlobs withdraws from the overlay every blob no unit still
// needs (Ledger.Withdrawable: every unit naming it is valid), counting
// them in rep; a blob whose withdrawal no node took is tried again by the
// next harvest.
func (p *Project) withdrawBlobs(ctx context.Context, l *Ledger, rep *HarvestReport) error {
	done, err := l.Withdrawable()
	if err != nil {
		return err
	}
	for _, b := range done {
		m, err := blob.DecodeManifest(b.Manifest)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("blob %x: stored manifest: %w", b.Key, err))
			continue
		}
		if _, err := blobclient.Withdraw(ctx, p.a, m, b.Created); err != nil {
			rep.Errors = append(rep.Errors, err)
			continue
		}
		if err := l.MarkWithdrawn(b.Key, p.a.Now()); err != nil {
			return err
		}
		rep.Withdrawn++
	}
	return nil
}

// resolve takes a job file's path from dir unless it is absolute.
func resolve(dir, name string) string {
	if filepath.IsAbs(name) || dir == "" {
		return filepath.Clean(name)
	}
	return filepath.Join(dir, name)
}

func fileKey(path string, kind blob.Kind) string { return string(kind) + "\x00" + path }
