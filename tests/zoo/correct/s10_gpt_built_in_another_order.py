"""GPTModel builds its layers in another order, keeps the blocks in a list first, and runs them in a loop."""
MODULE = "gpt"


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        blocks = []
        for _ in range(cfg["n_layers"]):
            blocks.append(TransformerBlock(cfg))
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.trf_blocks = nn.Sequential(*blocks)
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])

    def forward(self, in_idx):
        batch, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = self.drop_emb(tok_embeds + pos_embeds)
        for block in self.trf_blocks:
            x = block(x)
        x = self.final_norm(x)
        return self.out_head(x)
