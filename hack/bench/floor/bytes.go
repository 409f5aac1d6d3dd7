package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The byte floors read what the server must send for every pod and
// nothing more: each page is read to its end and thrown away, and only its
// continue token is decoded. They bound any client from below by the
// server's work and the bytes on the wire, as the decoding floors bound a
// client that decodes every pod.

// Accept headers of the two byte floors: protobuf pods, and the table of
// the same pods as kubectl's printing asks for it.
const (
	podsAccept  = "application/vnd.kubernetes.protobuf"
	tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"
)

// listBytes lists every pod in pages of page, reading each answer with
// read, and says how many pods and bytes it read.
func listBytes(ctx context.Context, cs kubernetes.Interface, selector string, page int64, table bool, include metav1.IncludeObjectPolicy) (int, int64, error) {
	read, accept := readPodsPage, podsAccept
	if table {
		read, accept = readTablePage, tableAccept
	}
	opts := metav1.ListOptions{LabelSelector: selector, Limit: page}
	pods, total := 0, int64(0)
	for {
		req := cs.CoreV1().RESTClient().Get().Resource("pods").
			VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", accept)
		if table {
			req = req.Param("includeObject", string(include))
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return pods, total, fmt.Errorf("list pods: %w", err)
		}
		counted := &countingReader{r: body}
		n, next, err := read(bufio.NewReaderSize(counted, 64<<10))
		_ = body.Close()
		pods, total = pods+n, total+counted.n
		if err != nil {
			return pods, total, fmt.Errorf("read a page of pods: %w", err)
		}
		if next == "" {
			return pods, total, nil
		}
		opts.Continue = next
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// protobufMagic starts every protobuf answer of the API server, before
// its runtime.Unknown envelope.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers: runtime.Unknown.Raw, PodList.Metadata and .Items,
// ListMeta.Continue.
const (
	unknownRaw   = 2
	listMetadata = 1
	listItems    = 2
	metaContinue = 3
)

// readPodsPage walks a protobuf PodList: it skips each pod's bytes,
// counting them, and decodes only the list metadata's continue token.
func readPodsPage(r io.Reader) (int, string, error) {
	in := r.(*bufio.Reader)
	magic := make([]byte, len(protobufMagic))
	if _, err := io.ReadFull(in, magic); err != nil || !bytes.Equal(magic, protobufMagic) {
		return 0, "", fmt.Errorf("not a protobuf answer (%q, %v)", magic, err)
	}
	pods, next := 0, ""
	// The envelope's fields, then the list's inside its Raw field: the
	// list is the rest of the envelope's Raw, read field by field.
	var inList int64 = -1
	for {
		num, typ, n, err := readTag(in)
		if errors.Is(err, io.EOF) {
			return pods, next, nil
		}
		if err != nil {
			return pods, next, err
		}
		if typ != protowire.BytesType {
			return pods, next, fmt.Errorf("field %d of wire type %d", num, typ)
		}
		size, m, err := readVarint(in)
		if err != nil {
			return pods, next, err
		}
		n += m
		switch {
		case inList < 0 && num == unknownRaw:
			inList = int64(size)
			continue
		case inList >= 0 && num == listMetadata:
			meta := make([]byte, size)
			if _, err := io.ReadFull(in, meta); err != nil {
				return pods, next, err
			}
			if next, err = continueToken(meta); err != nil {
				return pods, next, err
			}
		case inList >= 0 && num == listItems:
			pods++
			fallthrough
		default:
			if _, err := in.Discard(int(size)); err != nil {
				return pods, next, err
			}
		}
		if inList >= 0 {
			if inList -= int64(n) + int64(size); inList == 0 {
				inList = -1 // the envelope's fields after the list
			}
		}
	}
}

// readTag reads a field's tag; n is its length in bytes.
func readTag(in *bufio.Reader) (protowire.Number, protowire.Type, int, error) {
	v, n, err := readVarint(in)
	if err != nil {
		return 0, 0, n, err
	}
	num, typ := protowire.DecodeTag(v)
	return num, typ, n, nil
}

func readVarint(in *bufio.Reader) (uint64, int, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		b, err := in.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 10, errors.New("a varint of more than 10 bytes")
}

// continueToken reads ListMeta.Continue from its bytes.
func continueToken(meta []byte) (string, error) {
	for len(meta) > 0 {
		num, typ, n := protowire.ConsumeTag(meta)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		meta = meta[n:]
		if num == metaContinue && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(meta)
			if m < 0 {
				return "", protowire.ParseError(m)
			}
			return string(v), nil
		}
		m := protowire.ConsumeFieldValue(num, typ, meta)
		if m < 0 {
			return "", protowire.ParseError(m)
		}
		meta = meta[m:]
	}
	return "", nil
}

// rowStart begins every row of a Table's JSON; it cannot occur inside a
// cell, where a quote is escaped.
var rowStart = []byte(`"cells":`)

// readTablePage decodes a Table's JSON up to its list metadata, which the
// API server writes before the columns and the rows, and then reads the
// rest as bytes, counting the rows.
func readTablePage(r io.Reader) (int, string, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, "", fmt.Errorf("not a JSON object (%v, %v)", tok, err)
	}
	var meta metav1.ListMeta
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, "", fmt.Errorf("read the table: %w", err)
		}
		key, _ := tok.(string)
		if key == "metadata" {
			if err := dec.Decode(&meta); err != nil {
				return 0, "", fmt.Errorf("read the table's metadata: %w", err)
			}
			break
		}
		var skip json.RawMessage // kind and apiVersion
		if err := dec.Decode(&skip); err != nil {
			return 0, "", fmt.Errorf("read the table: %w", err)
		}
	}
	rows, err := countRows(io.MultiReader(dec.Buffered(), r))
	return rows, meta.Continue, err
}

// countRows reads r to its end and counts rowStart in it.
func countRows(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	keep := len(rowStart) - 1
	tail, rows := 0, 0
	for {
		n, err := r.Read(buf[tail:])
		end := tail + n
		rows += bytes.Count(buf[:end], rowStart)
		// The last bytes may begin a match that the next read ends; they
		// are too few to hold a whole one, so none is counted twice.
		tail = min(keep, end)
		copy(buf, buf[end-tail:end])
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
	}
}
