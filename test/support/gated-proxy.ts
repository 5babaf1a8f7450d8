import { AddressInfo, connect, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of a private redis-server whose server-to-client
 * direction can be held and let through one RESP line at a time: a test can
 * then decide in which order a client sees replies of calls it has in flight.
 * One client connection at a time (the latest).
 */
export class GatedProxy {
  private server!: Server;
  private held = '';
  private open = true;
  private down: Socket | null = null;

  constructor(private readonly upstreamPort: number) {}

  /** Listens on a free port of 127.0.0.1. @returns the port. */
  async start(): Promise<number> {
    this.server = createServer((client) => {
      const up = connect(this.upstreamPort, '127.0.0.1');
      this.down = client;
      client.pipe(up);
      up.on('data', (d) => {
        if (this.open) client.write(d);
        else this.held += d.toString('latin1');
      });
      up.on('close', () => client.destroy());
      client.on('close', () => up.destroy());
      up.on('error', () => undefined);
      client.on('error', () => undefined);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as AddressInfo).port;
  }

  /** Replies are kept from now on. */
  hold(): void {
    this.open = false;
  }

  /** Reply lines (CRLF-terminated) held now. */
  lines(): number {
    return this.held.split('\r\n').length - 1;
  }

  /** Lets the first `n` held lines through. */
  release(n: number): void {
    let cut = 0;
    for (let i = 0; i < n; i++) cut = this.held.indexOf('\r\n', cut) + 2;
    this.down!.write(Buffer.from(this.held.slice(0, cut), 'latin1'));
    this.held = this.held.slice(cut);
  }

  /** Lets everything held through and stops holding. */
  pass(): void {
    this.open = true;
    if (this.held) this.down!.write(Buffer.from(this.held, 'latin1'));
    this.held = '';
  }

  close(): void {
    this.down?.destroy();
    this.server.close();
  }
}
