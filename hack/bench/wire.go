package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// wireSizes are the bytes of one unpaginated LIST of every pod in each
// format a client can ask for.
type wireSizes struct {
	Proto, JSON, TableObject, TableMetadata, TableNone int64
}

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// measureWire has no client timeout but one that grows with the pods: a
// JSON LIST of 150,000 pods is more than a GB.
func measureWire(ctx context.Context, cfg *rest.Config, pods int) (wireSizes, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return wireSizes{}, fmt.Errorf("clientset: %w", err)
	}
	var w wireSizes
	for _, f := range []struct {
		dst           *int64
		accept, param string
	}{
		{&w.Proto, "application/vnd.kubernetes.protobuf", ""},
		{&w.JSON, "application/json", ""},
		{&w.TableObject, tableAccept, "Object"},
		{&w.TableMetadata, tableAccept, "Metadata"},
		{&w.TableNone, tableAccept, "None"},
	} {
		n, err := listBytes(ctx, cs, f.accept, f.param, 2*time.Minute+time.Duration(pods)*4*time.Millisecond)
		if err != nil {
			return w, err
		}
		*f.dst = n
	}
	return w, nil
}

func listBytes(ctx context.Context, cs kubernetes.Interface, accept, include string, limit time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", accept)
	if include != "" {
		req = req.Param("includeObject", include)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return 0, fmt.Errorf("list pods as %s %s: %w", accept, include, err)
	}
	defer body.Close()
	n, err := io.Copy(io.Discard, body)
	if err != nil {
		return n, fmt.Errorf("read pods as %s %s: %w", accept, include, err)
	}
	return n, nil
}
