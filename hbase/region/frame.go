package region

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// preamble opens every connection: magic, RPC version 0, SIMPLE auth.
var preamble = []byte{'H', 'B', 'a', 's', 0, 0x50}

// MaxFrame bounds a response frame. HBase rejects requests above 256 MiB;
// answers are bounded by the scan and multi size limits well below that.
const MaxFrame = 256 << 20

// ErrFrame reports a response frame that cannot be parsed.
var ErrFrame = errors.New("malformed response frame")

// AppendConnectionHeader appends the preamble and the connection header.
func AppendConnectionHeader(dst []byte, service, user string) ([]byte, error) {
	h := &pb.ConnectionHeader{
		UserInfo:            &pb.UserInformation{EffectiveUser: proto.String(user)},
		ServiceName:         proto.String(service),
		CellBlockCodecClass: proto.String(hrpc.KeyValueCodec),
	}
	dst = append(dst, preamble...)
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, h)
	if err != nil {
		return nil, fmt.Errorf("marshal connection header: %w", err)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst, nil
}

// AppendRequest appends one request frame: u32 length, delimited header,
// delimited request, cell block.
func AppendRequest(dst []byte, callID uint32, c *hrpc.Call, timeoutMs uint32) ([]byte, error) {
	h := &pb.RequestHeader{
		CallId:       proto.Uint32(callID),
		MethodName:   proto.String(c.Method),
		RequestParam: proto.Bool(true),
	}
	if c.Priority != 0 {
		h.Priority = proto.Uint32(c.Priority)
	}
	if timeoutMs != 0 {
		h.Timeout = proto.Uint32(timeoutMs)
	}
	if len(c.Cells) > 0 {
		h.CellBlockMeta = &pb.CellBlockMeta{Length: proto.Uint32(uint32(len(c.Cells)))}
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	if dst, err = appendDelimited(dst, h); err != nil {
		return nil, fmt.Errorf("marshal request header: %w", err)
	}
	if dst, err = appendParam(dst, c.Request); err != nil {
		return nil, fmt.Errorf("marshal %s request: %w", c.Method, err)
	}
	dst = append(dst, c.Cells...)
	n := len(dst) - at - 4
	if n > MaxFrame {
		return nil, fmt.Errorf("%s request of %d bytes exceeds %d", c.Method, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(dst[at:], uint32(n))
	return dst, nil
}

// appendParam appends a call's request message, length-delimited: a
// Multi's own by hrpc.AppendMultiRequest, the write path's hot message,
// every other through proto.
func appendParam(dst []byte, m proto.Message) ([]byte, error) {
	if mr, ok := m.(*pb.MultiRequest); ok {
		if out, ok := hrpc.AppendMultiRequest(dst, mr); ok {
			return out, nil
		}
	}
	return appendDelimited(dst, m)
}

// unmarshalResult decodes a call's response message: a Multi's answer by
// hrpc.UnmarshalMultiResponse where it can, every other through proto.
func unmarshalResult(b []byte, m proto.Message) error {
	if mr, ok := m.(*pb.MultiResponse); ok && hrpc.UnmarshalMultiResponse(b, mr) {
		return nil
	}
	return proto.Unmarshal(b, m)
}

func appendDelimited(dst []byte, m proto.Message) ([]byte, error) {
	o := proto.MarshalOptions{}
	dst = protowire.AppendVarint(dst, uint64(o.Size(m)))
	return o.MarshalAppend(dst, m)
}

// Response is one parsed response frame (without its length prefix).
type Response struct {
	Header pb.ResponseHeader
	// Message is the encoded response message (empty on exception).
	Message []byte
	// Cells is the cell block.
	Cells []byte
}

// ParseResponse parses a frame. Message and Cells alias frame.
func ParseResponse(frame []byte, r *Response) error {
	hb, n := protowire.ConsumeBytes(frame)
	if n < 0 {
		return fmt.Errorf("%w: header length: %v", ErrFrame, protowire.ParseError(n))
	}
	r.Header.Reset()
	if err := proto.Unmarshal(hb, &r.Header); err != nil {
		return fmt.Errorf("%w: header: %v", ErrFrame, err)
	}
	rest := frame[n:]
	cellLen := int(r.Header.GetCellBlockMeta().GetLength())
	if cellLen > len(rest) {
		return fmt.Errorf("%w: cell block of %d bytes with %d left", ErrFrame, cellLen, len(rest))
	}
	r.Cells = rest[len(rest)-cellLen:]
	rest = rest[:len(rest)-cellLen]
	r.Message = nil
	if r.Header.Exception != nil || len(rest) == 0 {
		return nil
	}
	mb, n := protowire.ConsumeBytes(rest)
	if n < 0 {
		return fmt.Errorf("%w: message length: %v", ErrFrame, protowire.ParseError(n))
	}
	if n != len(rest) {
		return fmt.Errorf("%w: %d stray bytes after the message", ErrFrame, len(rest)-n)
	}
	r.Message = mb
	return nil
}
