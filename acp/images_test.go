package acp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/workspace"
)

// pngImage is a small PNG, as an editor sends a pasted screenshot.
func pngImage(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withImages sets whether the fixture's profile takes images.
func (f *fixture) withImages(takes bool) *fixture {
	p := f.cfg.LLM.Profiles["test"]
	p.Images = &takes
	f.cfg.LLM.Profiles["test"] = p
	return f
}

// TestPromptImages: with a model that takes images, initialize says so,
// an image block (and an embedded image resource) reaches the model beside
// the text, and session/load shows it again.
func TestPromptImages(t *testing.T) {
	f := newFixture(t, nil).withImages(true)
	pic := pngImage(t)
	data := base64.StdEncoding.EncodeToString(pic)

	w, r := f.serve(t, func(string) (string, bool) { return "", false })
	conn := acpsdk.NewClientSideConnection(newClient(nil), w, r)
	resp, err := conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.AgentCapabilities.PromptCapabilities.Image || resp.AgentCapabilities.PromptCapabilities.Audio {
		t.Errorf("promptCapabilities = %+v, want image and no audio", resp.AgentCapabilities.PromptCapabilities)
	}
	id := f.newSession(t, conn)

	mime := "image/png"
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("what is wrong on this screen?"),
		acpsdk.ImageBlock(data, "image/png"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{
			Uri: "file://" + f.ws + "/shot.png", MimeType: &mime, Blob: data}}),
	}}); err != nil {
		t.Fatal(err)
	}
	m, ok := f.model.lastUser()
	if !ok || len(m.Images) != 2 || !strings.Contains(m.Text, "what is wrong on this screen?") || !strings.Contains(m.Text, "[image shot.png, attached]") {
		t.Fatalf("the model was sent %q with %d images, want the text and two images", m.Text, len(m.Images))
	}
	for i, img := range m.Images {
		if img.MIMEType != "image/png" || !bytes.Equal(img.Data, pic) {
			t.Errorf("image %d: %s, %d bytes; want the PNG sent (%d bytes)", i, img.MIMEType, len(img.Data), len(pic))
		}
	}

	// An image alone is a prompt.
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.ImageBlock(data, "image/png")}}); err != nil {
		t.Errorf("a prompt of one image: %v", err)
	}

	c2 := newClient(map[string]string{})
	conn2 := f.connect(t, c2)
	if _, err := conn2.LoadSession(context.Background(), acpsdk.LoadSessionRequest{SessionId: id, Cwd: f.ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	u := c2.updatesJSON(id)
	if n := strings.Count(u, `"type":"image"`); n != 3 || !strings.Contains(u, `"data":"`+data+`"`) || !strings.Contains(u, `"mimeType":"image/png"`) {
		t.Errorf("session/load replayed %d image chunks, want 3:\n%s", n, u)
	}
}

// TestPromptImagesRefused: an image a model cannot take, or that is not
// what it says, is refused with -32602 naming why; nothing reaches the
// model or the session, and the session goes on.
func TestPromptImagesRefused(t *testing.T) {
	pic := base64.StdEncoding.EncodeToString(pngImage(t))
	for _, tc := range []struct {
		name   string
		takes  bool
		blocks []acpsdk.ContentBlock
		want   string
	}{
		{"a model without images", false, []acpsdk.ContentBlock{acpsdk.TextBlock("look"), acpsdk.ImageBlock(pic, "image/png")},
			`the model of profile "test" (m) takes no images: send text, switch with /model to a profile that takes them, or set llm.profiles.test.images: true`},
		{"not base64", true, []acpsdk.ContentBlock{acpsdk.ImageBlock("not base64!", "image/png")}, "prompt block 0: the image/png image's data is not base64"},
		{"another type", true, []acpsdk.ContentBlock{acpsdk.ImageBlock(pic, "image/svg+xml")}, `image type "image/svg+xml" is not one of`},
		{"not what it says", true, []acpsdk.ContentBlock{acpsdk.TextBlock("look"), acpsdk.ImageBlock(base64.StdEncoding.EncodeToString([]byte("plain words")), "image/jpeg")},
			"prompt block 1: the data of the image said to be image/jpeg is text/plain"},
		{"a special command", true, []acpsdk.ContentBlock{acpsdk.TextBlock("/compact"), acpsdk.ImageBlock(pic, "image/png")}, "/compact is a special command: it takes no images"},
		{"audio", true, []acpsdk.ContentBlock{acpsdk.AudioBlock(pic, "audio/wav")}, "prompt block 0 is audio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil).withImages(tc.takes)
			conn := f.connect(t, newClient(map[string]string{}))
			id := f.newSession(t, conn)
			_, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: tc.blocks})
			var re *acpsdk.RequestError
			if err == nil || !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, tc.want) {
				t.Fatalf("session/prompt: %v, want -32602 with %q", err, tc.want)
			}
			if _, ok := f.model.lastUser(); ok {
				t.Errorf("the model was asked")
			}
			if prompt(t, conn, id, "just text") != acpsdk.StopReasonEndTurn {
				t.Errorf("the session does not go on")
			}
			if m, _ := f.model.lastUser(); m.Text != "just text" || len(m.Images) != 0 {
				t.Errorf("the next prompt sent %q with %d images: the refused one was kept", m.Text, len(m.Images))
			}
		})
	}
}

// TestEmbeddedImageTextModel: an embedded image resource is context, like
// an embedded binary: with a model that takes no images the prompt goes on,
// the image named and not sent.
func TestEmbeddedImageTextModel(t *testing.T) {
	f := newFixture(t, nil).withImages(false)
	conn := f.connect(t, newClient(map[string]string{}))
	id := f.newSession(t, conn)
	mime := "image/png"
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("see the screen"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{
			Uri: "file://" + f.ws + "/shot.png", MimeType: &mime, Blob: base64.StdEncoding.EncodeToString(pngImage(t))}}),
	}}); err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	m, ok := f.model.lastUser()
	if !ok || len(m.Images) != 0 || !strings.Contains(m.Text, "[image shot.png, not shown: the model takes no images]") {
		t.Errorf("the model was sent %q with %d images, want the image named and not sent", m.Text, len(m.Images))
	}
}

// TestImagesAfterModelSwitch: images sent to a model that takes them are
// replaced by a note when the session switches to one that does not.
func TestImagesAfterModelSwitch(t *testing.T) {
	f := newFixture(t, nil).withImages(true)
	no := false
	f.cfg.LLM.Profiles["text"] = workspace.LLMProfile{Provider: "openai-compatible", BaseURL: "http://127.0.0.1:1/v1", Model: "t", Images: &no}
	conn := f.connect(t, newClient(map[string]string{}))
	id := f.newSession(t, conn)
	pic := base64.StdEncoding.EncodeToString(pngImage(t))
	if _, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("see"), acpsdk.ImageBlock(pic, "image/png")}}); err != nil {
		t.Fatal(err)
	}
	prompt(t, conn, id, "/model text")
	prompt(t, conn, id, "and now?")
	f.model.mu.Lock()
	req := f.model.requests[len(f.model.requests)-1]
	f.model.mu.Unlock()
	first := req.Messages[0]
	if first.Role != "user" || len(first.Images) != 0 || !strings.Contains(first.Text, `1 image(s) attached here are not shown: the model of profile "text" takes no images`) {
		t.Errorf("the text model was sent %+v", first)
	}
}
