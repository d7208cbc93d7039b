import './base.css';
import './timeline.css';
