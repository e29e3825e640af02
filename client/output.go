package client

// The server sends output as text when it is UTF-8 and as base64 when it is
// not (stdout or stdoutBase64, data or dataBase64); these give the bytes
// back either way.

// StdoutData returns the standard output the result kept, byte for byte.
func (r *ExecResult) StdoutData() []byte { return textOrBytes(r.Stdout, r.StdoutBase64) }

// StderrData returns the standard error the result kept, byte for byte.
func (r *ExecResult) StderrData() []byte { return textOrBytes(r.Stderr, r.StderrBase64) }

// Bytes returns the chunk's bytes, exactly as the process wrote them.
func (c OutputChunk) Bytes() []byte { return textOrBytes(c.Data, c.DataBase64) }

func textOrBytes(text *string, b *[]byte) []byte {
	switch {
	case b != nil:
		return *b
	case text != nil:
		return []byte(*text)
	}
	return nil
}

// StdoutData returns the standard output the command kept, byte for byte.
func (r *SessionExecResult) StdoutData() []byte { return textOrBytes(r.Stdout, r.StdoutBase64) }

// StderrData returns the standard error the command kept, byte for byte.
func (r *SessionExecResult) StderrData() []byte { return textOrBytes(r.Stderr, r.StderrBase64) }
