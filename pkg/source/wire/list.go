package wire

import (
	"bufio"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadList reads a page of pods, asked for with ListAccept, as it arrives
// and makes each pod a row with d: from its protobuf bytes (see
// readPodList), or, from an answer in any other encoding, with client-go's
// decoding (see standard.go). meta has the page's list metadata as soon as
// it is read; item has each row in the page's order. A pod that does not
// decode is left out when d.Skip is set (see Decoder).
func ReadList(body io.Reader, d *Decoder, meta func(metav1.ListMeta), item func(PodRow)) error {
	in := bufio.NewReaderSize(body, answerBuffer)
	if peek, _ := in.Peek(sniffBytes); !isProtobuf(peek) || !fast() {
		if isProtobuf(peek) {
			readingProtobufSlowly()
		}
		mediaType, err := standardMediaType(peek, false)
		if err != nil {
			return err
		}
		return readStandardList(in, mediaType, d, meta, item)
	}
	return readPodList(in, meta, func(raw []byte) error {
		row, err := d.DecodePod(raw)
		switch {
		case err == nil:
			item(row)
		case d.skipped(err):
			err = nil
		}
		return err
	})
}
