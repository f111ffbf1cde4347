/**
 * A multi-platform image without a registry: an OCI image layout (a `docker load` archive) whose
 * index names two platforms, linux/amd64 (the layer and configuration of an image the machine's
 * engine holds, from its `docker save`) and linux/arm64 (a one-file layer of its own, never run
 * here). An engine with the containerd image store keeps the index: the image's id is the
 * index's digest, and a container made from it runs the amd64 manifest.
 */
import { createHash } from 'node:crypto';
import { promises as fs, createWriteStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract, pack } from 'tar-stream';
import { docker as machine } from './engine';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** The files of a `docker save` archive of `ref` from the machine's engine (name → bytes). */
async function saved(ref: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const ex = extract();
  ex.on('entry', (h, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      if (h.type === 'file') files.set(h.name.replace(/^\.\//, ''), Buffer.concat(chunks));
      next();
    });
  });
  await pipeline(await machine.getImage(ref).get(), ex);
  return files;
}

/** A tar of one file `name` holding `text`. */
async function oneFileLayer(name: string, text: string): Promise<Buffer> {
  const p = pack();
  p.entry({ name, mode: 0o644 }, text);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Writes `<dir>/multi.tar`: `source` (an image on the machine's engine, saved from it) as the
 * amd64 platform of an index tagged `ref`, beside an arm64 one. Returns the file, the index's
 * digest and each platform's manifest digest.
 */
export async function multiPlatformArchive(
  source: string,
  ref: string,
  dir: string,
): Promise<{ file: string; index: string; manifests: { amd64: string; arm64: string } }> {
  const files = await saved(source);
  const manifest = (JSON.parse((files.get('manifest.json') ?? Buffer.from('[]')).toString()) as { Config: string; Layers: string[] }[])[0];
  if (!manifest) throw new Error(`docker save ${source} has no manifest.json`);
  const blobs = new Map<string, Buffer>();
  const blob = (b: Buffer) => {
    const d = sha(b);
    blobs.set(d, b);
    return { digest: d, size: b.length };
  };
  const image = (config: object, layers: Buffer[]) => {
    const c = blob(Buffer.from(JSON.stringify(config)));
    const m = {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...c },
      layers: layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...blob(l) })),
    };
    return blob(Buffer.from(JSON.stringify(m)));
  };
  const config = JSON.parse((files.get(manifest.Config) as Buffer).toString()) as Record<string, unknown>;
  const amd64 = image(
    config,
    manifest.Layers.map((l) => files.get(l) as Buffer),
  );
  const armLayer = await oneFileLayer('platform.txt', 'arm64\n');
  const arm64 = image({ ...config, architecture: 'arm64', rootfs: { type: 'layers', diff_ids: [sha(armLayer)] } }, [armLayer]);
  const mediaType = 'application/vnd.oci.image.manifest.v1+json';
  const index = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.index.v1+json',
        manifests: [
          { mediaType, ...amd64, platform: { architecture: 'amd64', os: 'linux' } },
          { mediaType, ...arm64, platform: { architecture: 'arm64', os: 'linux' } },
        ],
      }),
    ),
  );
  const name = ref.includes('/') && !ref.split('/')[0]?.includes('.') ? `docker.io/${ref}` : ref;
  const top = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        mediaType: 'application/vnd.oci.image.index.v1+json',
        ...index,
        annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': ref.slice(ref.lastIndexOf(':') + 1) },
      },
    ],
  };
  const p = pack();
  p.entry({ name: 'oci-layout' }, JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  p.entry({ name: 'index.json' }, JSON.stringify(top));
  for (const [d, b] of blobs) p.entry({ name: `blobs/sha256/${d.slice('sha256:'.length)}` }, b);
  p.finalize();
  const file = path.join(dir, 'multi.tar');
  await fs.mkdir(dir, { recursive: true });
  await pipeline(p, createWriteStream(file));
  return { file, index: index.digest, manifests: { amd64: amd64.digest, arm64: arm64.digest } };
}
